"""The channels Relaydesk speaks, by name, and the channel identity each one speaks for.

A channel name is stored on every message and episode and keys the adapters; the identity
channel is the first part of a customer's channel identity key (`identity.normalize`). They
differ where one identity arrives through two providers: a WhatsApp number writes on
`whatsapp` (Twilio) or `whatsapp_cloud` (Meta's Cloud API), and both are the identity
`whatsapp:+E164`, while replies go back through the provider the customer wrote to.

These names sit at the bottom of the dependency graph (pure, importable by every package);
the gateway's catalog adds each channel's evidence rule and context prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeGuard, get_args

__all__ = [
    "CHANNEL_NAMES",
    "IDENTITY_CHANNELS",
    "IDENTITY_CHANNEL_OF",
    "ChannelName",
    "IdentityChannel",
    "channel_name",
    "identity_channel",
    "is_channel_name",
]

ChannelName = Literal["whatsapp", "whatsapp_cloud", "telegram", "webchat", "phone"]
IdentityChannel = Literal["whatsapp", "telegram", "webchat", "phone"]

CHANNEL_NAMES: Final[tuple[ChannelName, ...]] = get_args(ChannelName)
IDENTITY_CHANNELS: Final[tuple[IdentityChannel, ...]] = get_args(IdentityChannel)

IDENTITY_CHANNEL_OF: Final[Mapping[ChannelName, IdentityChannel]] = MappingProxyType(
    {
        "whatsapp": "whatsapp",
        # The Cloud API's sender is `whatsapp:+E164` too: the same identity as through Twilio.
        "whatsapp_cloud": "whatsapp",
        "telegram": "telegram",
        "webchat": "webchat",
        "phone": "phone",
    }
)


def is_channel_name(value: object) -> TypeGuard[ChannelName]:
    return isinstance(value, str) and value in IDENTITY_CHANNEL_OF


def channel_name(value: str) -> ChannelName:
    """`value` as a channel name; `ValueError` for a channel Relaydesk does not speak."""
    if not is_channel_name(value):
        raise ValueError(f"channel must be one of {', '.join(CHANNEL_NAMES)}")
    return value


def identity_channel(name: ChannelName) -> IdentityChannel:
    """The identity channel whose keys `name`'s senders have."""
    return IDENTITY_CHANNEL_OF[name]
