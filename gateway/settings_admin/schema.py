"""The tenant settings as a JSON Schema: the pydantic `TenantSettings` the lookup validates
with, plus the per-channel blocks a stored level may carry."""

from __future__ import annotations

from typing import Any

from gateway.settings_admin.descriptions import DESCRIPTIONS
from gateway.tenants import TenantSettings

SCHEMA_ID = "urn:relaydesk:tenant-settings"


def settings_schema() -> dict[str, Any]:
    """One stored level's keys: every key optional (a level holds only what it overrides)."""
    schema = TenantSettings.model_json_schema()
    schema.pop("required", None)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["description"] = (
        "Tenant settings, stored per level (domain, host, assistant) and looked up assistant → "
        "host → domain → these defaults, key by key. `channels` holds one block per channel "
        "(the same keys), applied after every level."
    )
    schema["properties"]["channels"] = {
        "type": "object",
        "additionalProperties": {"type": "object"},
    }
    for key, prop in schema["properties"].items():
        if key in DESCRIPTIONS:
            prop["description"] = DESCRIPTIONS[key]
    return schema
