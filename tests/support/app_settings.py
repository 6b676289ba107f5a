"""Settings of a real app on a fresh SQLite file: the test API key and its header."""

from __future__ import annotations

from pathlib import Path

from gateway.config import Settings

API_KEY = "test-api-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "RELAYDESK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}",
        "RELAYDESK_API_KEY": API_KEY,
        "RELAYDESK_WEBCHAT_SECRET": "webchat-secret-for-tests-0123456789abcdef",
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]
