"""A private PostgreSQL cluster a test may stop and restart without touching the shared server.

`PrivatePostgres()` as a context manager runs `initdb` into a fresh temporary directory (trust
auth, its unix socket inside that directory), starts the server on a free loopback port and
removes everything at the end. `stop()` is `pg_ctl stop -m immediate` — the server dies the
way a crash kills it, no clean shutdown — and `start()` brings it back on the same port and
data directory (crash recovery included). `start(recovering=True)` starts it as a standby with
no primary and hot standby off: it stays in recovery and refuses every connection with "the
database system is not accepting connections" (SQLSTATE 57P03), as a server does while it
replays its WAL after a crash — only for as long as the test wants. `pause()` freezes the
postmaster (SIGSTOP) until `resume()`: a new connection is taken by the kernel and then never
answered, like a server that hangs; sessions already open keep working.

The binaries are found under /usr/lib/postgresql/*/bin (newest version first) or on PATH; when
they are missing the test is skipped with the reason (a failure under
RELAYDESK_TEST_REQUIRE_SERVICES=1). PostgreSQL refuses to run as root: as root the cluster runs
as the `postgres` system user, which owns the temporary directory.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.databases import unavailable
from tests.support.processes import free_port

START_TIMEOUT_S = 30
SERVICE_USER = "postgres"


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
        self._bindir = find_bindir()
        if self._bindir is None:
            unavailable(
                "a private PostgreSQL cluster",
                "no initdb/pg_ctl under /usr/lib/postgresql/*/bin or on PATH",
            )
        if os.geteuid() == 0:
            try:
                self._user = pwd.getpwnam(SERVICE_USER)
            except KeyError:
                unavailable(
                    "a private PostgreSQL cluster",
                    f"running as root and there is no {SERVICE_USER!r} user to run it as",
                )
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
                # Test data: durability across an OS crash is not what is tested here.
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
