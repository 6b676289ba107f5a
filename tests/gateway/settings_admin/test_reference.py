"""The configuration reference in docs/ is generated from the schema and kept current, and
every setting says what it does."""

from __future__ import annotations

from pathlib import Path

from gateway.settings_admin.descriptions import DESCRIPTIONS
from gateway.settings_admin.reference import render_reference, with_reference
from gateway.settings_admin.schema import settings_schema
from gateway.tenants import TenantSettings

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_committed_reference_is_current() -> None:
    document = DOC.read_text(encoding="utf-8")
    assert with_reference(document) == document, (
        "docs/configuration.md is out of date: run "
        "python -m gateway.settings_admin.reference docs/configuration.md"
    )


def test_every_setting_is_described_in_the_schema_and_the_reference() -> None:
    assert set(TenantSettings.model_fields) | {"channels"} == set(DESCRIPTIONS)
    schema = settings_schema()
    reference = render_reference()
    for key in TenantSettings.model_fields:
        assert schema["properties"][key]["description"] == DESCRIPTIONS[key]
        assert f"| `{key}` |" in reference
