"""The channels Relaydesk speaks, each listed once: what the rest of the gateway knows of one.

An entry names the channel (`identity.channels.ChannelName`: the name stored on its messages
and episodes), the identity channel its senders' keys belong to, the rule that turns what a
sender claims into identity evidence, and the prefix a `/v1/context` caller may write before
the channel's own id. Accept (its evidence rules, given by `gateway.app`), retention,
`/v1/context` and the conversations API read this table; delivery's WhatsApp window reads the
identity channel (`identity.service_window`). It imports no adapter and no route, so any layer
may; the adapters and routes of each channel are wired in `gateway.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from gateway.customers.evidence import (
    EvidenceRule,
    phone_caller,
    telegram_sender,
    webchat_visitor,
    whatsapp_sender,
)
from identity.channels import ChannelName, IdentityChannel, identity_channel

__all__ = ["BY_NAME", "CATALOG", "NAMES", "CatalogEntry", "entry"]


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    name: ChannelName
    evidence: EvidenceRule
    # The external-id prefix a `/v1/context` caller may write before the channel's own id.
    context_prefix: str = ""

    @property
    def identity_channel(self) -> IdentityChannel:
        return identity_channel(self.name)


CATALOG: Final[tuple[CatalogEntry, ...]] = (
    CatalogEntry("whatsapp", whatsapp_sender),
    # The Cloud API's sender is `whatsapp:+E164` too: the same identity as through Twilio, on a
    # channel of its own so that replies go back through the provider the customer wrote to.
    CatalogEntry("whatsapp_cloud", whatsapp_sender),
    CatalogEntry("telegram", telegram_sender, "telegram:"),
    CatalogEntry("webchat", webchat_visitor, "web:anon:"),
    CatalogEntry("phone", phone_caller, "phone:"),
)
BY_NAME: Final[Mapping[str, CatalogEntry]] = MappingProxyType({e.name: e for e in CATALOG})
NAMES: Final[tuple[ChannelName, ...]] = tuple(e.name for e in CATALOG)


def entry(name: str) -> CatalogEntry:
    """The channel `name`; `KeyError` for one Relaydesk does not speak."""
    return BY_NAME[name]
