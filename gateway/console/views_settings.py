"""The settings a conversation follows, shown read-only on its page: the few an operator asks
about (the model, the handoff and fallback texts, retention) and every key its tenant's levels
set away from the built-in defaults. Changed through `relaydesk settings` or `/v1/settings`."""

from __future__ import annotations

import json

from gateway.console.html import Html, el
from gateway.settings_admin.levels import SettingsLevel
from gateway.tenants import TenantSettings

BUILT_IN_IN_LANGUAGE = "built-in, in the customer's language"


def _row(name: str, value: str) -> Html:
    return el("div", None, el("dt", None, name), el("dd", None, value))


def effective_settings_section(level: SettingsLevel, settings: TenantSettings | None) -> Html:
    """A compact, collapsed section; `settings` None: the stored levels give no usable
    settings (the turns of this conversation fail the same way)."""
    summary = el("summary", None, "Settings this conversation follows")
    where = el(
        "p",
        {"class_": "muted"},
        "Tenant ",
        el("code", None, level.tenant.encode()),
        ", channel ",
        el("code", None, level.channel or "-"),
    )
    if settings is None:
        body = el("p", {"class_": "error"}, "The stored settings of this tenant are not usable.")
        return el("details", {"id": "effective-settings"}, summary, where, body)
    overridden = settings.model_dump(mode="json", exclude_defaults=True)
    facts = el(
        "dl",
        {"class_": "settings"},
        _row("Model", settings.model or "the deployment's"),
        _row("Handoff message", settings.handoff_message or BUILT_IN_IN_LANGUAGE),
        _row("Fallback message", settings.fallback_message or BUILT_IN_IN_LANGUAGE),
        _row("Hands over after failures", str(settings.handoff_after_failures)),
        _row(
            "Messages kept",
            f"{settings.retention_days} days" if settings.retention_days else "without limit",
        ),
    )
    changed = (
        el(
            "pre",
            {"id": "settings-overrides"},
            json.dumps(overridden, ensure_ascii=False, indent=2),
        )
        if overridden
        else el("p", {"class_": "muted"}, "Every setting is the built-in default.")
    )
    return el(
        "details",
        {"id": "effective-settings"},
        summary,
        where,
        facts,
        el("h3", None, "Set by this tenant's levels"),
        changed,
    )
