"""Which stored level of tenant settings a command or a request names: a domain, a host or an
assistant in it, and optionally one channel's block of that level.

The same addressing as the lookup (`gateway.tenants`): an assistant's level may sit under a
host or directly under the domain; a channel's block (`channels.<name>` of a level) applies
after every level. In a URL the level is a path of name/value pairs in that order:
`domain/default/host/shop.example.com/channel/whatsapp` (the domain may be left out: the
default one).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from gateway.tenant_ref import DEFAULT_DOMAIN, TenantRef
from identity.channels import CHANNEL_NAMES

PARTS = ("domain", "host", "assistant", "channel")


class LevelInvalid(ValueError):
    """A level path that names no level (unknown part, parts out of order, empty value)."""


@dataclass(frozen=True, slots=True)
class SettingsLevel:
    """One stored level: the tenant row (domain, host, assistant) and, when `channel` is set,
    that row's block for the channel."""

    domain: str = DEFAULT_DOMAIN
    host: str | None = None
    assistant_id: str | None = None
    channel: str | None = None

    def __post_init__(self) -> None:
        for name, value in (
            ("domain", self.domain),
            ("host", self.host),
            ("assistant", self.assistant_id),
            ("channel", self.channel),
        ):
            if value is not None and (not value.strip() or len(value) > 200):
                raise LevelInvalid(f"{name}: give a value of 1 to 200 characters")
        if self.channel is not None and self.channel not in CHANNEL_NAMES:
            # A block under a name no message carries would be stored and never applied.
            raise LevelInvalid(
                f"channel: {self.channel!r} is not one of {', '.join(CHANNEL_NAMES)}"
            )

    @property
    def tenant(self) -> TenantRef:
        return TenantRef(self.domain, self.host, self.assistant_id)

    @property
    def row(self) -> SettingsLevel:
        """The stored row the level lives in (itself, or its channel block's row)."""
        return SettingsLevel(self.domain, self.host, self.assistant_id)

    @property
    def kind(self) -> str:
        """The most specific part named: domain, host, assistant or channel."""
        if self.channel is not None:
            return "channel"
        if self.assistant_id is not None:
            return "assistant"
        return "host" if self.host is not None else "domain"

    def path(self) -> str:
        """`domain/<d>[/host/<h>][/assistant/<a>][/channel/<c>]`, each value URL-quoted."""
        parts = [("domain", self.domain), ("host", self.host)]
        parts += [("assistant", self.assistant_id), ("channel", self.channel)]
        return "/".join(f"{name}/{quote(value, safe='')}" for name, value in parts if value)

    @classmethod
    def from_path(cls, path: str) -> SettingsLevel:
        """The level a path names (see the module's docstring); `LevelInvalid` otherwise."""
        segments = [segment for segment in path.strip("/").split("/") if segment != ""]
        if len(segments) % 2:
            raise LevelInvalid(
                f"{path!r}: give name/value pairs (domain, host, assistant, channel)"
            )
        values: dict[str, str] = {}
        last = -1
        for name, value in zip(segments[::2], segments[1::2], strict=True):
            if name not in PARTS:
                raise LevelInvalid(f"{name!r} is not a level; one of {', '.join(PARTS)}")
            if PARTS.index(name) <= last:
                raise LevelInvalid(f"{path!r}: give the parts in the order {', '.join(PARTS)}")
            last = PARTS.index(name)
            values[name] = unquote(value)
        return cls(
            domain=values.get("domain", DEFAULT_DOMAIN),
            host=values.get("host"),
            assistant_id=values.get("assistant"),
            channel=values.get("channel"),
        )
