from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.cli import main
from gateway.config import ConfigError, load_settings
from gateway.tenants import TenantSettings
from outbound import FetchPolicy


def test_defaults_are_the_embedded_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAYDESK_DATABASE_URL", raising=False)
    monkeypatch.delenv("RELAYDESK_CONFIG", raising=False)
    settings = load_settings()
    assert settings.database_url == "sqlite+aiosqlite:///./relaydesk.db"
    assert settings.redis_url is None
    assert settings.model == "offline"
    assert settings.port == 8080
    assert settings.should_auto_migrate
    assert (settings.header_timeout_s, settings.body_timeout_s) == (10.0, 30.0)
    assert settings.metrics_token is None and settings.erasure_tombstone_days == 7


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RELAYDESK_PORT", "not-a-port"),
        ("RELAYDESK_PORT", "70000"),
        ("RELAYDESK_DATABASE_URL", "postgresql://sync-driver/db"),
        ("RELAYDESK_REDIS_URL", "http://localhost"),
        ("RELAYDESK_MODEL", "gpt-4o"),
        ("RELAYDESK_PUBLIC_URL", "example.org/no-scheme"),
        ("RELAYDESK_WEBCHAT_SECRET", "too-short"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "https://shop.example.com/chat"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "shop.example.com"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "https://*.example.com"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "null"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "https://shop.example.com; script-src *"),
        ("RELAYDESK_WEBCHAT_ALLOWED_ORIGINS", "https://shop.example.com:70000"),
        ("RELAYDESK_METRICS_TOKEN", "too-short"),
        ("RELAYDESK_HEADER_TIMEOUT_S", "0"),
        ("RELAYDESK_BODY_TIMEOUT_S", "-1"),
        ("RELAYDESK_ERASURE_TOMBSTONE_DAYS", "0"),
        ("RELAYDESK_FETCH_ALLOW", "10.0.0.0/8, http://desk.internal"),
        ("RELAYDESK_LOG_LEVELS", "httpx=LOUD"),
        ("RELAYDESK_LOG_LEVELS", "httpx"),
        ("RELAYDESK_LOG_LEVELS", "=DEBUG"),
    ],
)
def test_a_wrong_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert variable in str(raised.value)


def test_loggers_named_with_their_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAYDESK_LOG_LEVELS", "httpx=debug, relaydesk.access = WARNING")
    settings = load_settings()
    assert settings.logger_levels == (("httpx", "DEBUG"), ("relaydesk.access", "WARNING"))
    monkeypatch.delenv("RELAYDESK_LOG_LEVELS")
    assert load_settings().logger_levels == ()


def test_toml_file_sets_the_same_keys_and_env_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "relaydesk.toml"
    config.write_text('RELAYDESK_PORT = 9001\nRELAYDESK_MODEL = "openai:gpt-4o-mini"\n')
    monkeypatch.setenv("RELAYDESK_CONFIG", str(config))
    monkeypatch.delenv("RELAYDESK_PORT", raising=False)
    monkeypatch.delenv("RELAYDESK_MODEL", raising=False)
    settings = load_settings()
    assert (settings.port, settings.model) == (9001, "openai:gpt-4o-mini")
    monkeypatch.setenv("RELAYDESK_PORT", "9002")
    assert load_settings().port == 9002


def test_bad_toml_value_names_the_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "relaydesk.toml"
    config.write_text('RELAYDESK_PORT = "eighty"\n')
    monkeypatch.setenv("RELAYDESK_CONFIG", str(config))
    monkeypatch.delenv("RELAYDESK_PORT", raising=False)
    with pytest.raises(ConfigError, match="RELAYDESK_PORT"):
        load_settings()


def test_cli_exits_2_naming_the_bad_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELAYDESK_PORT", "abc")
    assert main(["migrate"]) == 2
    assert "RELAYDESK_PORT" in capsys.readouterr().err


def test_cli_migrate_brings_a_new_database_to_head(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gateway.storage.migrate import head_revision

    monkeypatch.setenv("RELAYDESK_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}")
    assert main(["migrate"]) == 0
    assert f"database at revision {head_revision()}" in capsys.readouterr().out


def test_a_process_that_only_acknowledges_needs_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAYDESK_CONFIG", raising=False)
    monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
    monkeypatch.setenv("RELAYDESK_RUN_BACKGROUND", "false")
    with pytest.raises(ConfigError, match="RELAYDESK_REDIS_URL"):
        load_settings()
    monkeypatch.setenv("RELAYDESK_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert load_settings().run_background is False


def test_allowed_origins_are_written_as_browsers_write_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RELAYDESK_CONFIG", raising=False)
    assert load_settings().webchat_allowed_origins == ()
    monkeypatch.setenv(
        "RELAYDESK_WEBCHAT_ALLOWED_ORIGINS",
        "https://Shop.Example.com:443, http://127.0.0.1:8000,https://shop.example.com",
    )
    assert load_settings().webchat_allowed_origins == (
        "https://shop.example.com",
        "http://127.0.0.1:8000",
    )


def test_the_fetch_allowlist_is_hosts_and_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAYDESK_FETCH_ALLOW", raising=False)
    assert load_settings().fetch_policy == FetchPolicy()  # public addresses only
    monkeypatch.setenv("RELAYDESK_FETCH_ALLOW", " Desk.Internal , 10.20.0.0/16,127.0.0.1 ")
    policy = load_settings().fetch_policy
    assert policy.allow_hosts == ("desk.internal",)
    assert [str(n) for n in policy.allow_networks] == ["10.20.0.0/16", "127.0.0.1/32"]


def test_media_hosts_are_host_patterns() -> None:
    settings = TenantSettings(media_hosts=["CDN.example.org", "*.shop.example"])
    assert settings.media_hosts == ["cdn.example.org", "*.shop.example"]
    assert TenantSettings().media_hosts == []  # no marker is honoured by default
    with pytest.raises(ValidationError, match="media_hosts"):
        TenantSettings(media_hosts=["https://cdn.example.org/catalogo"])
