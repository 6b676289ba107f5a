"""Server-issued web chat visitor ids: `<random>_<HMAC-SHA256 of it>`, both hex.

A visitor id is the only secret of an anonymous visitor: whoever holds it reads the thread. The
widget therefore never makes one up; it asks `POST /webchat/visitors` and keeps what it gets, and
every web chat entry point refuses an id this server did not sign. (Hex around an underscore:
the channel's visitor-id pattern, `[A-Za-z0-9_-]{8,128}`, has no dot, and hex has no underscore,
so the two halves never blur.)

The signing key, in order:

0. `RELAYDESK_WEBCHAT_VISITOR_KEY`, when set (at least 32 bytes);
1. derived from `RELAYDESK_WEBCHAT_SECRET` (HMAC of a fixed label, so a visitor-id signature
   is never also a valid identity-token signature), the same in every process sharing it;
2. without that secret, on a SQLite file: a random key kept in a file beside the database
   (`<database>.webchat-key`, mode 0600), created once, so ids survive restarts and are shared
   by the processes of `serve --workers N`;
3. otherwise (PostgreSQL without the secret, an in-memory database): a random key made at
   start, with a warning; `serve --workers N` makes one and hands it to all its processes
   (`with_visitor_key`), but ids do not survive a restart. Set the secret in production.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

from aiohttp import web
from pydantic import SecretStr
from sqlalchemy.engine import make_url

from gateway.config import Settings
from gateway.keys import SETTINGS

__all__ = ["VISITORS", "VisitorIds", "visitor_ids_ctx", "visitor_key_for", "with_visitor_key"]

log = logging.getLogger("relaydesk.webchat")

_LABEL: Final = b"relaydesk webchat visitor id v1"
_RANDOM_BYTES: Final = 16
_SIGNED: Final = re.compile(r"^([0-9a-f]{32})_([0-9a-f]{64})$")
KEY_FILE_SUFFIX: Final = ".webchat-key"


class VisitorIds:
    """Issues and checks signed visitor ids with one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("a visitor id key must be at least 32 bytes")
        self._key = key

    def _mac(self, random_part: str) -> str:
        return hmac.new(self._key, random_part.encode(), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        random_part = secrets.token_hex(_RANDOM_BYTES)
        return f"{random_part}_{self._mac(random_part)}"

    def is_valid(self, visitor_id: str) -> bool:
        """Whether this server signed `visitor_id` (constant-time on the signature)."""
        match = _SIGNED.fullmatch(visitor_id)
        if match is None:
            return False
        return hmac.compare_digest(self._mac(match.group(1)), match.group(2))


VISITORS = web.AppKey("visitors", VisitorIds)


def _sqlite_file(database_url: str) -> Path | None:
    url = make_url(database_url)
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def _key_file(path: Path) -> bytes:
    """The key in `path`, written first if there is none (O_EXCL: of processes starting
    together one writes, the others read what it wrote)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may be between creating and writing it
            raw = path.read_text().strip()
            if raw:
                return bytes.fromhex(raw)
            time.sleep(0.02)
        raise RuntimeError(f"the web chat key file {path} is empty") from None
    key = secrets.token_bytes(32)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key.hex())
    return key


def visitor_key_for(settings: Settings) -> bytes:
    """The visitor-id signing key for this configuration (see the module docstring)."""
    if settings.webchat_visitor_key is not None:
        return settings.webchat_visitor_key.get_secret_value().encode()
    if settings.webchat_secret is not None:
        secret = settings.webchat_secret.get_secret_value().encode()
        return hmac.new(secret, _LABEL, hashlib.sha256).digest()
    database = _sqlite_file(settings.database_url)
    if database is not None:
        return _key_file(database.with_name(database.name + KEY_FILE_SUFFIX))
    log.warning(
        "RELAYDESK_WEBCHAT_SECRET is not set: web chat visitor ids are signed with a key made "
        "at start (visitors get new ids after a restart)"
    )
    return secrets.token_bytes(32)


def with_visitor_key(settings: Settings) -> Settings:
    """`settings` with a visitor-id key for processes started together, so that all of them
    accept the ids any of them issued (a no-op when one is configured or derivable)."""
    configured = settings.webchat_visitor_key is not None or settings.webchat_secret is not None
    if configured or _sqlite_file(settings.database_url) is not None:
        return settings
    key = SecretStr(secrets.token_hex(32))
    return settings.model_copy(update={"webchat_visitor_key": key})


async def visitor_ids_ctx(app: web.Application) -> AsyncIterator[None]:
    app[VISITORS] = VisitorIds(visitor_key_for(app[SETTINGS]))
    yield
