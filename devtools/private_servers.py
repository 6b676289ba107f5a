"""Private PostgreSQL and Redis servers that a run may stop, crash and restart without touching
any shared server: the chaos benchmark's and the fault tests' own.

`PrivatePostgres()` as a context manager runs `initdb` into a fresh temporary directory (trust
auth, its unix socket inside that directory), starts the server on a free loopback port and
removes everything at the end. `stop()` is `pg_ctl stop -m immediate` — the server dies the
way a crash kills it, no clean shutdown — and `start()` brings it back on the same port and
data directory (crash recovery included). `start(recovering=True)` starts it as a standby with
no primary and hot standby off: it stays in recovery and refuses every connection with "the
database system is not accepting connections" (SQLSTATE 57P03), as a server does while it
replays its WAL after a crash — only for as long as the caller wants. `pause()` freezes the
postmaster (SIGSTOP) until `resume()`: a new connection is taken by the kernel and then never
answered, like a server that hangs; sessions already open keep working.

The binaries are found under /usr/lib/postgresql/*/bin (newest version first) or on PATH.
PostgreSQL refuses to run as root: as root the cluster runs as the `postgres` system user,
which owns the temporary directory.

`PrivateRedis` is a `redis-server` on a free port with no persistence: a restart comes back
empty, as after losing a cache node.

`postgres_missing()` and `redis_missing()` say why a server cannot be started here (None when
it can); starting one anyway raises `ServiceMissing`.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from redis.asyncio import Redis

from devtools.bench.harness import free_port

START_TIMEOUT_S = 30
SERVICE_USER = "postgres"
REDIS_START_TIMEOUT_S = 10


class ServiceMissing(RuntimeError):
    """The binaries (or the user to run them as) are not on this machine."""


def _version_key(path: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path))


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl, newest installed version first."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    initdb = shutil.which("initdb")
    if initdb is not None and shutil.which("pg_ctl") is not None:
        return Path(initdb).parent
    return None


def _service_user() -> pwd.struct_passwd | None:
    """The user the cluster runs as: None for the current one (not root)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError as exc:
        raise ServiceMissing(
            f"running as root and there is no {SERVICE_USER!r} user to run it as"
        ) from exc


def postgres_missing() -> str | None:
    """Why a private cluster cannot be started here, or None."""
    if find_bindir() is None:
        return "no initdb/pg_ctl under /usr/lib/postgresql/*/bin or on PATH"
    try:
        _service_user()
    except ServiceMissing as exc:
        return str(exc)
    return None


def redis_missing() -> str | None:
    """Why a private redis-server cannot be started here, or None."""
    return None if shutil.which("redis-server") else "redis-server is not on PATH"


class PrivatePostgres:
    def __init__(self) -> None:
        self.port = 0
        self.root: Path | None = None
        self.running = False
        self._bindir: Path | None = None
        self._user: pwd.struct_passwd | None = None

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the cluster's `postgres` database."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def _data(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    def __enter__(self) -> PrivatePostgres:
        why = postgres_missing()
        if why is not None:
            raise ServiceMissing(why)
        self._bindir = find_bindir()
        self._user = _service_user()
        # Not under pytest's tmp_path: that is private to root, and the server user must reach it.
        self.root = Path(tempfile.mkdtemp(prefix="relaydesk-pg-"))
        try:
            if self._user is not None:
                os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
            self._run(
                "initdb",
                "-D",
                str(self._data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            )
            self.port = free_port()
            self.start()
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self.running:
                self.resume()  # a paused postmaster would not stop
                self.stop()
        finally:
            self._remove()

    def start(self, *, recovering: bool = False) -> None:
        assert self.root is not None
        signal_file = self._data / "standby.signal"
        if recovering:
            signal_file.touch()
            if self._user is not None:
                os.chown(signal_file, self._user.pw_uid, self._user.pw_gid)
        else:
            signal_file.unlink(missing_ok=True)
        options = " ".join(
            (
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}",
                # Throwaway data: durability across an OS crash is not what is exercised here.
                "-c fsync=off",
                "-c full_page_writes=off",
                f"-c hot_standby={'off' if recovering else 'on'}",
            )
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self._data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
        )
        self.running = True

    def stop(self) -> None:
        """Stop at once, like a crash: no checkpoint, clients cut off mid-transaction."""
        self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")
        self.running = False

    def pause(self) -> None:
        os.kill(self._postmaster_pid(), signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self._postmaster_pid(), signal.SIGCONT)

    def _postmaster_pid(self) -> int:
        return int((self._data / "postmaster.pid").read_text().split("\n", 1)[0])

    def log(self) -> str:
        assert self.root is not None
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _run(self, program: str, *args: str) -> None:
        assert self._bindir is not None
        extra: dict[str, Any] = {}
        if self._user is not None:
            extra = {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(self._bindir / program), *args],
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S + 10,
            cwd=self.root,
            check=False,
            **extra,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
                + self.log()[-2000:]
            )

    def _remove(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


class PrivateRedis:
    def __init__(self, directory: Path, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceMissing("redis-server is not on PATH")
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
            async with asyncio.timeout(REDIS_START_TIMEOUT_S):
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
