"""A TCP proxy whose server-to-client direction can be stalled and resumed.

`stall()` holds the upstream's bytes (the replies) instead of forwarding them; `resume()`
delivers what was held, late, to whichever client connection is still open. Requests keep
flowing, so the server has answered a command whose client gave up — the case where a client
that reuses the connection would read someone else's reply.
"""

from __future__ import annotations

import asyncio
import contextlib


class StallingProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0  # client connections accepted so far

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    def stall(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.close()
            return
        for task in (
            asyncio.create_task(self._pump(reader, up_writer, stallable=False)),
            asyncio.create_task(self._pump(up_reader, writer, stallable=True)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, stallable: bool
    ) -> None:
        try:
            while data := await source.read(65536):
                if stallable:
                    await self._flowing.wait()
                sink.write(data)
                await sink.drain()
        except OSError:
            pass  # the other side went away: nothing left to deliver
        finally:
            sink.close()
