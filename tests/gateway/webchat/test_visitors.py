"""Signed visitor ids and where their key comes from: the web chat secret, else a key file
beside the SQLite database (kept across restarts, shared by processes), else this process."""

from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

import pytest
from pydantic import SecretStr

from channels.webchat import VISITOR_ID
from gateway.config import Settings
from gateway.webchat.visitors import (
    KEY_FILE_SUFFIX,
    VisitorIds,
    visitor_key_for,
    with_visitor_key,
)

SECRET = "webchat-secret-for-tests-0123456789abcdef"


def _sqlite(tmp_path: Path, **values: object) -> Settings:
    return Settings(RELAYDESK_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'r.db'}", **values)  # type: ignore[arg-type]


def test_an_issued_id_fits_the_channel_pattern_and_verifies() -> None:
    ids = VisitorIds(b"k" * 32)
    issued = ids.issue()
    assert VISITOR_ID.fullmatch(issued)
    assert ids.is_valid(issued)
    assert not VisitorIds(b"o" * 32).is_valid(issued)
    assert not ids.is_valid(issued.upper())
    assert not ids.is_valid(issued + "0")
    assert not ids.is_valid("")


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError):
        VisitorIds(b"short")


def test_the_key_derives_from_the_webchat_secret_and_is_not_the_secret(tmp_path: Path) -> None:
    settings = _sqlite(tmp_path, RELAYDESK_WEBCHAT_SECRET=SECRET)
    key = visitor_key_for(settings)
    assert key == visitor_key_for(_sqlite(tmp_path / "other", RELAYDESK_WEBCHAT_SECRET=SECRET))
    assert key != SECRET.encode()
    assert (
        key
        == hmac.new(SECRET.encode(), b"relaydesk webchat visitor id v1", hashlib.sha256).digest()
    )
    assert not (tmp_path / ("r.db" + KEY_FILE_SUFFIX)).exists()


def test_without_a_secret_sqlite_keeps_a_key_file_beside_the_database(tmp_path: Path) -> None:
    first = visitor_key_for(_sqlite(tmp_path))
    path = tmp_path / ("r.db" + KEY_FILE_SUFFIX)
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    # A restart, or another process of the same deployment, signs with the same key.
    assert visitor_key_for(_sqlite(tmp_path)) == first
    issued = VisitorIds(first).issue()
    assert VisitorIds(visitor_key_for(_sqlite(tmp_path))).is_valid(issued)


def test_without_a_secret_or_a_database_file_the_key_is_this_process_only() -> None:
    settings = Settings(RELAYDESK_DATABASE_URL="sqlite+aiosqlite://")
    assert visitor_key_for(settings) != visitor_key_for(settings)


def test_a_configured_visitor_key_wins(tmp_path: Path) -> None:
    key = "k" * 40
    settings = _sqlite(tmp_path, RELAYDESK_WEBCHAT_VISITOR_KEY=key, RELAYDESK_WEBCHAT_SECRET=SECRET)
    assert visitor_key_for(settings) == key.encode()
    with pytest.raises(ValueError):
        _sqlite(tmp_path, RELAYDESK_WEBCHAT_VISITOR_KEY="short")


def test_processes_started_together_share_one_key_without_a_secret() -> None:
    postgres = Settings(RELAYDESK_DATABASE_URL="postgresql+asyncpg://db/relaydesk")
    shared = with_visitor_key(postgres)
    assert shared.webchat_visitor_key is not None
    # What each child derives from the settings it was handed: one key for all of them.
    assert visitor_key_for(shared) == visitor_key_for(shared.model_copy())
    configured = postgres.model_copy(update={"webchat_secret": SecretStr(SECRET)})
    assert with_visitor_key(configured) is configured
