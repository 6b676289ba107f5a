"""A private `redis-server` on a free port that a test may kill and restart (never the shared
one). No persistence: a restart comes back empty, as after losing a cache node."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from redis.asyncio import Redis

from tests.support.databases import unavailable
from tests.support.processes import free_port


class PrivateRedis:
    def __init__(self, directory: Path, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            unavailable("redis-server", "not on PATH")
        self._binary = str(binary)
        self._directory = directory
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        command = [
            self._binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self._directory),
        ]  # fmt: skip
        log = (self._directory / "redis.log").open("ab")
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        await self._wait_ready()

    def kill(self) -> None:
        """SIGKILL: connections drop at once, nothing is flushed."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=5)
            self._process = None

    async def restart(self) -> None:
        """Start again on the same port (empty)."""
        self.kill()
        await self.start()

    def client(self) -> Redis:
        return Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=5)

    async def _wait_ready(self) -> None:
        client = self.client()
        try:
            async with asyncio.timeout(10):
                while True:
                    assert self._process is not None
                    if self._process.poll() is not None:
                        raise RuntimeError(f"redis-server exited ({self._process.returncode})")
                    try:
                        if await client.ping():
                            return
                    except Exception:  # not listening yet
                        pass
                    await asyncio.sleep(0.02)
        finally:
            await client.aclose()


@asynccontextmanager
async def private_redis(directory: Path) -> AsyncIterator[PrivateRedis]:
    server = PrivateRedis(directory)
    await server.start()
    try:
        yield server
    finally:
        server.kill()
