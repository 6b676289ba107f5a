from __future__ import annotations

from gateway.settings_admin.form import form_fields, read_form, shown
from gateway.tenants import TenantSettings


def test_every_key_gets_a_field_of_its_schemas_kind() -> None:
    fields = {field.key: field for field in form_fields()}
    assert set(fields) == set(TenantSettings.model_fields)  # `channels`: on channel levels
    assert fields["window"].kind == "integer" and fields["window"].minimum == 1024
    assert fields["instruction"].kind == "longtext"
    assert fields["handoff_message"].kind == "longtext"  # nullable text
    assert fields["retention_covers_memory"].kind == "boolean"
    assert fields["call_center_customer"].choices == ("propose", "merge")
    assert fields["rate_limits"].kind == "json" and fields["tool_turn_budget_s"].kind == "number"


def test_a_submitted_form_reads_back_into_a_document() -> None:
    fields = form_fields()
    document, problems = read_form(
        fields,
        {
            "window": "16384",
            "handoff_message": "Um momento!\r\nJá volto.",
            "retention_covers_memory": "true",
            "rate_limits": '{"visitor_ids_per_address": null}',
            "instruction": "   ",  # blank: not set here
        },
    )
    assert problems == ()
    assert document == {
        "window": 16384,
        "handoff_message": "Um momento!\nJá volto.",
        "retention_covers_memory": True,
        "rate_limits": {"visitor_ids_per_address": None},
    }
    _, problems = read_form(
        fields, {"window": "big", "rate_limits": "{", "call_center_customer": "x"}
    )
    assert {p.key for p in problems} == {"window", "rate_limits", "call_center_customer"}


def test_values_show_as_their_fields_hold_them() -> None:
    assert shown("integer", 8192) == "8192"
    assert shown("boolean", False) == "false"
    assert shown("json", {"a": None}) == '{"a": null}'
    assert shown("text", None) == ""
