"""The channel catalog and the registry that wires it: one entry per channel in each, read by
webhooks, accept, retention and `/v1/context`."""

from __future__ import annotations

import httpx
import pytest

from gateway import channel_catalog, registry
from gateway.config import Settings
from gateway.customers.evidence import SenderClaim, observe_claim
from gateway.memory.retention import CHANNELS as RETAINED_CHANNELS
from gateway.webchat.hub import WebChatHub
from identity import DEFAULT_BLOCKED, InvalidIdentifier, channel_identity_key
from identity.channels import CHANNEL_NAMES, ChannelName, channel_name, identity_channel
from outbound import FetchPolicy, SafeFetcher

SENDERS = {
    "whatsapp": "whatsapp:+5511998765432",
    "whatsapp_cloud": "whatsapp:+5511998765432",
    "telegram": "123456789",
    "webchat": "v-3f1c",
    "phone": "+5511998765432",
}


def test_every_channel_has_one_entry_and_a_sender_rule() -> None:
    assert channel_catalog.NAMES == ("whatsapp", "whatsapp_cloud", "telegram", "webchat", "phone")
    assert set(SENDERS) == set(channel_catalog.NAMES)
    for name in channel_catalog.NAMES:
        observation = observe_claim(
            channel_catalog.entry(name).evidence,
            SenderClaim(channel=name, sender=SENDERS[name], call_id="c-1"),
            text="",
            webchat_secret=None,
            region="BR",
            blocked=DEFAULT_BLOCKED,
        )
        # The evidence names an identity of the same channel; WhatsApp's, through either
        # provider.
        assert observation.key.channel == name.removesuffix("_cloud")


async def test_adapters_are_built_from_settings_under_their_names() -> None:
    fetcher = SafeFetcher(FetchPolicy())
    async with httpx.AsyncClient() as http:
        deps = registry.AdapterDeps(Settings(), http, WebChatHub(None), fetcher)
        adapters = registry.build_adapters(deps)
        try:
            # Phone is never sent to.
            assert set(adapters) == {"whatsapp", "whatsapp_cloud", "telegram", "webchat"}
            for name, adapter in adapters.items():
                assert adapter.name == name
        finally:
            await registry.close_adapters(adapters)
            await fetcher.aclose()


@pytest.mark.parametrize("sender", ["²", "12a", "9" * 30, "-5", ""])
def test_a_telegram_id_that_is_not_a_number_is_refused(sender: str) -> None:
    with pytest.raises(InvalidIdentifier):
        channel_catalog.entry("telegram").evidence(SenderClaim("telegram", sender), None)


def test_retention_covers_every_registered_channel() -> None:
    assert set(RETAINED_CHANNELS) == set(channel_catalog.NAMES)


def test_the_catalog_lists_every_channel_name_once_in_order() -> None:
    assert channel_catalog.NAMES == CHANNEL_NAMES
    assert len(set(channel_catalog.NAMES)) == len(channel_catalog.NAMES)


def test_every_wired_channel_has_a_catalog_entry_and_every_entry_is_wired() -> None:
    wired = [wiring.name for wiring in registry.WIRING]
    assert wired == list(channel_catalog.NAMES)


@pytest.mark.parametrize("name", CHANNEL_NAMES)
def test_the_identity_channel_of_each_entry_keys_its_senders(name: ChannelName) -> None:
    entry = channel_catalog.entry(name)
    observation = observe_claim(
        entry.evidence,
        SenderClaim(channel=name, sender=SENDERS[name], call_id="c-1"),
        text="",
        webchat_secret=None,
        region="BR",
        blocked=DEFAULT_BLOCKED,
    )
    assert observation.key.channel == entry.identity_channel
    # A `/v1/context` caller's prefixed id reads as the same key.
    prefixed = f"{entry.context_prefix}{SENDERS[name]}"
    assert channel_identity_key(name, prefixed) == observation.key


def test_whatsapp_cloud_speaks_for_the_whatsapp_identity() -> None:
    assert identity_channel("whatsapp_cloud") == "whatsapp"
    assert str(channel_identity_key("whatsapp_cloud", "whatsapp:+5511998765432")) == (
        "whatsapp:+5511998765432"
    )
    assert channel_name("whatsapp_cloud") == "whatsapp_cloud"
    with pytest.raises(ValueError, match="channel must be one of"):
        channel_name("sms")
    with pytest.raises(KeyError):
        channel_catalog.entry("sms")
