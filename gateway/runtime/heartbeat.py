"""A process's heartbeat: a file its own event loop touches every few seconds, read by
`relaydesk health background|worker` (a container's or a pod's health check).

The processes with no HTTP port (`relaydesk background`, `relaydesk worker`) cannot answer
`/healthz`. Instead, while one runs, a task on its event loop sets the modification time of
`<RELAYDESK_HEARTBEAT_DIR>/<role>.heartbeat` every `BEAT_EVERY_S`; a loop that is stuck (a
blocking call, a busy loop) stops touching it, and the file goes stale. The check reads only
the file's age, so it costs nothing and needs neither the database nor Redis: an outage of
those is the background process's to ride out, not a reason to restart it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gateway.runtime.tasks import cancel_and_wait

log = logging.getLogger("relaydesk.heartbeat")

Role = Literal["background", "worker"]
ROLES: tuple[Role, ...] = ("background", "worker")

BEAT_EVERY_S = 5.0
# Six missed beats: a loop busy for a moment under a burst is not called stuck.
STALE_AFTER_S = 30.0


def heartbeat_path(directory: Path, role: Role) -> Path:
    """The file `role`'s process keeps fresh inside `directory`."""
    return directory / f"{role}.heartbeat"


def _touch(path: Path) -> None:
    # A few bytes' metadata write on a local file: quick enough for the event loop itself,
    # which is the point (the beat must come from the loop it vouches for).
    try:
        path.touch()
    except OSError as exc:
        log.warning(
            "heartbeat not written", extra={"fields": {"path": str(path), "error": str(exc)}}
        )


async def _beat(path: Path, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        _touch(path)


@contextlib.asynccontextmanager
async def beating(path: Path, every_s: float = BEAT_EVERY_S) -> AsyncIterator[None]:
    """Keep `path` fresh from this event loop while the body runs; remove it after, so a
    stopped process is never taken for a live one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _touch(path)
    task = asyncio.create_task(_beat(path, every_s), name=f"heartbeat {path.name}")
    try:
        yield
    finally:
        await cancel_and_wait([task])
        path.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Pulse:
    """What a heartbeat file says: whether it is fresh, and in words why (or why not)."""

    fresh: bool
    detail: str


def read_pulse(
    path: Path, *, stale_after_s: float = STALE_AFTER_S, now: float | None = None
) -> Pulse:
    """The pulse of the process beating into `path`, at `now` (wall-clock seconds)."""
    try:
        modified = os.stat(path).st_mtime
    except FileNotFoundError:
        return Pulse(False, f"no heartbeat at {path}: the process is not running, or not yet")
    except OSError as exc:
        return Pulse(False, f"heartbeat at {path} unreadable: {exc}")
    age = (time.time() if now is None else now) - modified
    if age > stale_after_s:
        return Pulse(False, f"last beat {age:.0f} s ago (stale after {stale_after_s:.0f} s)")
    return Pulse(True, f"last beat {max(age, 0.0):.0f} s ago")
