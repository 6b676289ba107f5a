"""docker/.env.example is what `relaydesk config env-example` prints from the settings: every
variable of `gateway.config.Settings`, with its default and the comment above its field."""

from __future__ import annotations

import pytest

from gateway.cli import main
from gateway.config import Settings
from gateway.env_example import REGENERATE, field_comments, render_env_example
from tests.support.compose import DOCKER, env_file_values


def test_the_committed_file_is_current() -> None:
    committed = (DOCKER / ".env.example").read_text()
    assert committed == render_env_example(), f"docker/.env.example is stale: run {REGENERATE}"


def test_the_command_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "env-example"]) == 0
    assert capsys.readouterr().out == render_env_example()


def test_every_setting_is_listed_with_its_default() -> None:
    text = render_env_example()
    for name, field in Settings.model_fields.items():
        assert field.alias is not None, name
        assert f"{field.alias}=" in text, field.alias
    assert "# RELAYDESK_PORT=8080\n" in text
    assert "# RELAYDESK_RUN_BACKGROUND=true\n" in text
    assert "# WHATSAPP_CLOUD_API_BASE=https://graph.facebook.com/v21.0\n" in text
    assert "# RELAYDESK_HEARTBEAT_DIR=/tmp/relaydesk\n" in text
    # The comment above the field explains it.
    assert "# Where conversation and message events are posted" in text


def test_only_what_compose_needs_is_set_and_it_is_empty() -> None:
    # Everything else stays commented: its default applies, and copying the file sets nothing.
    values = env_file_values(render_env_example())
    assert values == {
        "POSTGRES_PASSWORD": "",
        "REDIS_PASSWORD": "",
        "RELAYDESK_PROXY_ADDRESS": "127.0.0.1",
        "RELAYDESK_PROXY_PORT": "8080",
        "RELAYDESK_WEBCHAT_SECRET": "",
    }


def test_field_comments_are_the_lines_just_above_each_field() -> None:
    source = """class S:
    # one
    # two
    first: int = Field(1)

    second: str = Field(
        "x"
    )
    # three
    third: int = 3
"""
    assert field_comments(source) == {"first": "one two", "second": "", "third": "three"}
