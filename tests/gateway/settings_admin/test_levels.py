from __future__ import annotations

import pytest

from gateway.settings_admin.levels import LevelInvalid, SettingsLevel
from gateway.tenant_ref import TenantRef


def test_a_path_names_the_level_and_reads_back() -> None:
    level = SettingsLevel.from_path("domain/default/host/shop.example.com/channel/whatsapp")
    assert level == SettingsLevel("default", "shop.example.com", None, "whatsapp")
    assert level.kind == "channel"
    assert level.tenant == TenantRef("default", "shop.example.com")
    assert level.row == SettingsLevel("default", "shop.example.com")
    assert SettingsLevel.from_path(level.path()) == level


def test_the_domain_may_be_left_out_and_values_are_unquoted() -> None:
    level = SettingsLevel.from_path("assistant/sales%2Fbot")
    assert (level.domain, level.assistant_id, level.kind) == ("default", "sales/bot", "assistant")
    assert level.path() == "domain/default/assistant/sales%2Fbot"


@pytest.mark.parametrize(
    "path",
    ["domain", "house/x", "host/a/domain/b", "channel/x/host/y", "domain/%20"],
)
def test_paths_that_name_no_level_are_refused(path: str) -> None:
    with pytest.raises(LevelInvalid):
        SettingsLevel.from_path(path)


def test_a_channel_no_message_carries_is_refused() -> None:
    with pytest.raises(LevelInvalid, match="whatsap"):
        SettingsLevel(channel="whatsap")
