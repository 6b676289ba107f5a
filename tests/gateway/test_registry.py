"""The channel registry: one entry per channel, read by webhooks, accept and `/v1/context`."""

from __future__ import annotations

import httpx
import pytest

from gateway import registry
from gateway.config import Settings
from gateway.customers.evidence import SenderClaim, observe_claim
from gateway.webchat.hub import WebChatHub
from identity import DEFAULT_BLOCKED, InvalidIdentifier

SENDERS = {
    "whatsapp": "whatsapp:+5511998765432",
    "whatsapp_cloud": "whatsapp:+5511998765432",
    "telegram": "123456789",
    "webchat": "v-3f1c",
    "phone": "+5511998765432",
}


def test_every_channel_has_one_entry_and_a_sender_rule() -> None:
    assert registry.NAMES == ("whatsapp", "whatsapp_cloud", "telegram", "webchat", "phone")
    assert set(SENDERS) == set(registry.NAMES)
    for name in registry.NAMES:
        observation = observe_claim(
            registry.entry(name).evidence,
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
    async with httpx.AsyncClient() as http:
        adapters = registry.build_adapters(registry.AdapterDeps(Settings(), http, WebChatHub(None)))
        try:
            # Phone is never sent to.
            assert set(adapters) == {"whatsapp", "whatsapp_cloud", "telegram", "webchat"}
            for name, adapter in adapters.items():
                assert adapter.name == name
        finally:
            await registry.close_adapters(adapters)


@pytest.mark.parametrize("sender", ["²", "12a", "9" * 30, "-5", ""])
def test_a_telegram_id_that_is_not_a_number_is_refused(sender: str) -> None:
    with pytest.raises(InvalidIdentifier):
        registry.entry("telegram").evidence(SenderClaim("telegram", sender), None)
