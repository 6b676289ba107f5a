"""The channel guides name what the gateway really has: every webhook or API path they tell a
newcomer to paste is a route of the app, every variable they tell him to set is a setting the
processes read, and every provider page they rely on is cited."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.app import create_app
from gateway.config import CONFIG_FILE_ENV, Settings
from tests.support.app_settings import make_settings

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "channels").glob("*.md"))
STEP_BY_STEP = ("twilio-whatsapp.md", "whatsapp-cloud-api.md", "telegram.md")

# Paths as the guides give them to paste or call: inside inline code (cited pages are links).
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(/webhooks/[a-z/]+[a-z]|/v1/transcripts)\b")
VARIABLE = re.compile(r"\b((?:RELAYDESK|TWILIO|TELEGRAM|WHATSAPP_CLOUD)_[A-Z0-9_]*[A-Z0-9])\b")


def routes(tmp_path: Path) -> set[str]:
    app = create_app(make_settings(tmp_path))
    return {resource.canonical for resource in app.router.resources()}


def test_every_path_a_guide_names_is_a_route(tmp_path: Path) -> None:
    known = routes(tmp_path)
    named = {
        path
        for guide in GUIDES
        for code in CODE.findall(guide.read_text())
        for path in PATH.findall(code)
    }
    assert {"/webhooks/twilio/whatsapp", "/webhooks/whatsapp/cloud", "/webhooks/telegram"} <= named
    assert named - known == set()


def test_every_variable_a_guide_names_is_a_setting() -> None:
    settings = {field.alias or name.upper() for name, field in Settings.model_fields.items()}
    settings.add(CONFIG_FILE_ENV)
    named = {name for guide in GUIDES for name in VARIABLE.findall(guide.read_text())}
    assert {"TWILIO_AUTH_TOKEN", "WHATSAPP_CLOUD_APP_SECRET", "TELEGRAM_WEBHOOK_SECRET"} <= named
    assert named - settings == set()


@pytest.mark.parametrize("name", STEP_BY_STEP)
def test_a_step_by_step_guide_cites_the_providers_documentation(name: str) -> None:
    guide = (ROOT / "docs" / "channels" / name).read_text()
    sources = guide[guide.index("## Sources") :]
    provider = {
        "twilio-whatsapp.md": "https://www.twilio.com/docs/",
        "whatsapp-cloud-api.md": "https://developers.facebook.com/docs/",
        "telegram.md": "https://core.telegram.org/bots",
    }[name]
    assert provider in sources
    # Each guide lists the mistakes a newcomer makes with the log line each leaves.
    assert "## The usual mistakes" in guide
    assert '"reason": ' in guide
