from __future__ import annotations

import pytest

from gateway.settings_admin.documents import (
    SettingsInvalid,
    changes,
    check_descendants,
    check_row,
    level_document,
    parse_value,
    patched,
    row_document,
    with_key,
    without_key,
)
from gateway.settings_admin.levels import SettingsLevel

DOMAIN = SettingsLevel()
WHATSAPP = SettingsLevel(channel="whatsapp")


def test_dotted_keys_set_and_unset_nested_tables() -> None:
    document = with_key({}, "rate_limits.model_calls_per_customer", "30/minute")
    assert document == {"rate_limits": {"model_calls_per_customer": "30/minute"}}
    emptied, found = without_key(document, "rate_limits.model_calls_per_customer")
    assert found and emptied == {}
    same, found = without_key(document, "rate_limits.nothing")
    assert not found and same == document


def test_a_key_under_a_plain_value_is_refused_naming_it() -> None:
    with pytest.raises(SettingsInvalid) as refused:
        with_key({"window": 9000}, "window.size", 1)
    assert refused.value.problems[0].key == "window"


def test_values_read_as_json_or_as_text() -> None:
    assert parse_value("30") == 30
    assert parse_value("null") is None
    assert parse_value('["a", "b"]') == ["a", "b"]
    assert parse_value("Um momento, por favor") == "Um momento, por favor"


def test_a_patch_merges_tables_and_keeps_null_as_a_value() -> None:
    stored = {"rate_limits": {"visitor_ids_per_address": "10/hour"}, "window": 9000}
    merged = patched(stored, {"rate_limits": {"webchat_messages_per_visitor": None}})
    assert merged == {
        "rate_limits": {"visitor_ids_per_address": "10/hour", "webchat_messages_per_visitor": None},
        "window": 9000,
    }
    assert stored["rate_limits"] == {"visitor_ids_per_address": "10/hour"}  # not changed


def test_changes_list_the_dotted_keys_with_both_sides() -> None:
    before = {"window": 9000, "rate_limits": {"visitor_ids_per_address": "10/hour"}}
    after = {"window": 9000, "instruction": "x", "rate_limits": {}}
    found = {c.key: c for c in changes(before, after)}
    assert set(found) == {"instruction", "rate_limits.visitor_ids_per_address", "rate_limits"}
    assert not found["instruction"].existed_before and found["instruction"].after == "x"
    assert found["rate_limits.visitor_ids_per_address"].before == "10/hour"


def test_a_channel_level_is_its_block_of_the_row() -> None:
    row = {"window": 9000, "channels": {"whatsapp": {"window": 4096}, "phone": {}}}
    assert level_document(WHATSAPP, row) == {"window": 4096}
    assert row_document(WHATSAPP, {"window": 2048}, row)["channels"]["whatsapp"] == {"window": 2048}
    assert "whatsapp" not in row_document(WHATSAPP, {}, row)["channels"]


def test_problems_name_the_bad_keys() -> None:
    with pytest.raises(SettingsInvalid) as refused:
        check_row(DOMAIN, {"windw": 9000, "rate_limits": {"visitor_ids_per_address": "x"}}, [])
    keys = {problem.key for problem in refused.value.problems}
    assert keys == {"windw", "rate_limits.visitor_ids_per_address"}
    assert "windw" in str(refused.value)


def test_a_channel_block_is_checked_under_its_own_name() -> None:
    with pytest.raises(SettingsInvalid) as refused:
        check_row(DOMAIN, {"channels": {"phone": {"window": 10}}}, [])
    assert [p.key for p in refused.value.problems] == ["channels.phone.window"]
    with pytest.raises(SettingsInvalid) as refused:
        check_row(WHATSAPP, {"channels": {"whatsapp": {"window": 10}}}, [])
    assert [p.key for p in refused.value.problems] == ["window"]


def test_a_level_is_checked_on_the_levels_it_sits_on() -> None:
    # Valid alone, but not over a domain that raised the low-water mark.
    host = SettingsLevel(host="shop.example.com")
    with pytest.raises(SettingsInvalid) as refused:
        check_row(host, {"threshold_tokens": 1000}, [{"low_water_tokens": 1200}])
    assert "low_water_tokens must be below threshold_tokens" in str(refused.value)
    settings = check_row(host, {"threshold_tokens": 5000}, [{"low_water_tokens": 1200}])
    assert (settings.threshold_tokens, settings.low_water_tokens) == (5000, 1200)


def test_a_change_that_breaks_a_more_specific_level_is_refused() -> None:
    host = {"threshold_tokens": 2000}
    rows = {(None, None): {"low_water_tokens": 2500}, ("shop.example.com", None): host}
    with pytest.raises(SettingsInvalid) as refused:
        check_descendants(DOMAIN, rows)
    assert "domain/default/host/shop.example.com" in str(refused.value)
    # A channel block of the domain applies under the host too.
    rows = {
        (None, None): {"channels": {"phone": {"low_water_tokens": 2500}}},
        ("shop.example.com", None): host,
    }
    with pytest.raises(SettingsInvalid) as refused:
        check_descendants(DOMAIN, rows)
    assert "shop.example.com/channel/phone" in str(refused.value)
    # Another host's assistant is not under this host.
    check_descendants(
        SettingsLevel(host="a.example"),
        {
            ("a.example", None): {"threshold_tokens": 2000},
            ("b.example", "x"): {"low_water_tokens": 2500},
        },
    )
