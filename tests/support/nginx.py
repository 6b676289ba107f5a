"""The shipped docker/nginx.conf, rendered and run by Debian's nginx.

nginx's image renders `/etc/nginx/templates/*.template` at start with `envsubst`, replacing
only the variables set in its environment (so `$host` and the other nginx variables stay):
`render_template` does the same. `LocalNginx` runs that rendering under a main configuration
of its own (a private prefix, pid, logs and temporary paths in a directory, in the
foreground) on a loopback port, so no root and no system nginx are involved.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

DOCKER = Path(__file__).resolve().parents[2] / "docker"
SHIPPED = DOCKER / "nginx.conf"
_TEMPLATE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
START_TIMEOUT_S = 10.0


def nginx_missing() -> str | None:
    """Why nginx cannot run here, or None."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        return "nginx is not installed (apt-get install nginx)"
    return None


def _binary() -> str:
    return shutil.which("nginx") or "/usr/sbin/nginx"


def render_template(text: str, values: Mapping[str, str]) -> str:
    """`envsubst` restricted to the names in `values`, as nginx's image runs it."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name in values else match.group(0)

    return _TEMPLATE_VARIABLE.sub(replace, text)


def upstream_servers(addresses: Sequence[str]) -> str:
    """The RELAYDESK_GATEWAYS value naming these `host:port` gateways."""
    return " ".join(f"server {address} max_fails=3 fail_timeout=10s;" for address in addresses)


def _main_config(directory: Path, site: Path) -> str:
    # What /etc/nginx/nginx.conf of the image gives the site, with every path inside
    # `directory`; one process in the foreground (no user to switch to, nothing daemonized).
    return f"""
daemon off;
master_process off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log info;
events {{ worker_connections 256; }}
http {{
    access_log {directory}/access.log;
    client_body_temp_path {directory}/client_body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    include {site};
}}
"""


class LocalNginx:
    """docker/nginx.conf served on 127.0.0.1:`port` in front of `gateways`."""

    def __init__(
        self,
        directory: Path,
        port: int,
        gateways: Sequence[str],
        *,
        listen_options: str = "",
        edit: Callable[[str], str] | None = None,
    ) -> None:
        """`listen_options` follow the address on the listen line (`ssl`); `edit` changes the
        rendered file as an operator would (the TLS variant's lines uncommented)."""
        self.directory = directory
        self.port = port
        self.values = {
            "RELAYDESK_PROXY_LISTEN": f"127.0.0.1:{port} {listen_options}".strip(),
            "RELAYDESK_GATEWAYS": upstream_servers(gateways),
        }
        self._edit = edit
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def error_log(self) -> str:
        path = self.directory / "error.log"
        return path.read_text() if path.exists() else ""

    async def __aenter__(self) -> LocalNginx:
        self.directory.mkdir(parents=True, exist_ok=True)
        site = self.directory / "default.conf"
        rendered = render_template(SHIPPED.read_text(), self.values)
        site.write_text(rendered if self._edit is None else self._edit(rendered))
        main = self.directory / "nginx.conf"
        main.write_text(_main_config(self.directory, site))
        command = [_binary(), "-p", f"{self.directory}/", "-c", str(main), "-e", "stderr"]
        checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=30)
        if checked.returncode != 0:
            raise RuntimeError(f"nginx refused the configuration: {checked.stderr}")
        self._stderr = (self.directory / "stderr.log").open("wb")
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._stderr)
        await self._until_listening()
        return self

    async def _until_listening(self) -> None:
        async with asyncio.timeout(START_TIMEOUT_S):
            while True:
                assert self._process is not None
                if self._process.poll() is not None:
                    raise RuntimeError(f"nginx exited: {self.error_log()}")
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                await writer.wait_closed()
                return

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.send_signal(signal.SIGQUIT)  # graceful: finish open requests
                try:
                    await asyncio.to_thread(self._process.wait, 10)
                except subprocess.TimeoutExpired:
                    os.kill(self._process.pid, signal.SIGKILL)
                    self._process.wait()
        finally:
            if self._stderr is not None:
                self._stderr.close()
