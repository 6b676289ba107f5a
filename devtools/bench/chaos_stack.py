"""Everything a chaos run starts, and stops at the end in reverse order: a private PostgreSQL
cluster (migrated) and a private Redis that the faults may stop, the local Twilio API (calling
back with signed status reports, as Twilio does, to the gateway's real loopback URL), the local
slow model when one is asked for, ``relaydesk serve --workers 2 --background 2`` and a
``relaydesk worker``, each kept running by `devtools.bench.chaos_processes.Kept`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from devtools.bench.chaos_options import ChaosOptions
from devtools.bench.chaos_processes import Kept, serve_ready, worker_ready
from devtools.bench.chaos_records import Create, Restart
from devtools.bench.harness import TWILIO_TOKEN, ServerNotReady, relaydesk_command
from devtools.bench.model_server import SlowModel
from devtools.bench.reply_stack import answering_gateway
from devtools.local_twilio import LocalTwilio
from devtools.private_servers import PrivatePostgres, PrivateRedis, private_redis
from devtools.twilio_webhook import WHATSAPP_PATH
from gateway.storage.engine import make_engine
from gateway.storage.migrate import upgrade

GATEWAY_PROCESSES = 2
BACKGROUND_PROCESSES = 2
SLOW_MODEL = "openai:bench-slow"

Progress = Callable[[str], None]


class ChaosBenchError(RuntimeError):
    """A server the run needs is missing or did not start."""


@dataclass
class TwilioLog:
    """The local Twilio API with the arrival time of each create it accepted."""

    arrivals: list[float] = field(default_factory=list)
    api: LocalTwilio = field(init=False)

    def __post_init__(self) -> None:
        self.api = LocalTwilio(auth_token=TWILIO_TOKEN, on_created=self._arrived)

    def _arrived(self, at: float, form: Mapping[str, str]) -> None:
        self.arrivals.append(at)

    def creates(self) -> tuple[Create, ...]:
        return tuple(
            Create(
                at, form.get("To", ""), form.get("Body", ""), form.get("StatusCallback", ""), sid
            )
            for at, form, sid in zip(self.arrivals, self.api.created, self.api.sids, strict=True)
        )


@dataclass
class ChaosStack:
    postgres: PrivatePostgres
    redis: PrivateRedis
    twilio: TwilioLog
    serve: Kept
    worker: Kept
    webhook_url: str  # the gateway's WhatsApp webhook, as Twilio calls (and signs) it
    restarts: list[Restart]

    @property
    def database_url(self) -> str:
        return self.postgres.url

    def pids(self) -> dict[str, int]:
        """The live processes by role (``gateway-1``, ``background-2``, ``worker``…)."""
        return {**self.serve.roles, **self.worker.roles}


@contextlib.asynccontextmanager
async def chaos_stack(
    options: ChaosOptions, workdir: Path, progress: Progress
) -> AsyncIterator[ChaosStack]:
    async with contextlib.AsyncExitStack() as started:
        progress("starting a private PostgreSQL cluster and Redis")
        postgres = started.enter_context(PrivatePostgres())
        redis = await started.enter_async_context(private_redis(workdir))
        engine = make_engine(postgres.url)
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()
        twilio = TwilioLog()
        twilio_api = await started.enter_async_context(twilio.api.serving())
        model_env: dict[str, str] = {}
        if options.model_latency_s > 0:
            model = SlowModel(options.model_latency_s)
            model_url = await started.enter_async_context(model.serving())
            model_env = {"RELAYDESK_MODEL": SLOW_MODEL, "RELAYDESK_MODEL_BASE_URL": model_url}
        gateway = answering_gateway(
            "chaos",
            database_url=postgres.url,
            redis_url=redis.url,
            twilio_api=twilio_api,
            serve_args=(),
            RELAYDESK_LOG_LEVEL="INFO",  # serve's log names its children's pids
            **model_env,
        )
        command = relaydesk_command()
        restarts: list[Restart] = []
        serve = Kept(
            "serve",
            [
                *command, "serve", "--port", str(gateway.port),
                "--workers", str(GATEWAY_PROCESSES), "--background", str(BACKGROUND_PROCESSES),
            ],
            gateway.env,
            workdir,
            serve_ready(gateway.port),
            restarts,
            follow_children=True,
        )  # fmt: skip
        worker = Kept("worker", [*command, "worker"], gateway.env, workdir, worker_ready, restarts)
        for kept in (serve, worker):
            progress(f"starting relaydesk {kept.name}")
            started.push_async_callback(kept.stop)
            began = time.perf_counter()
            try:
                await kept.start()
            except ServerNotReady as exc:
                raise ChaosBenchError(str(exc)) from exc
            progress(f"relaydesk {kept.name} ready after {time.perf_counter() - began:.1f} s")
        yield ChaosStack(
            postgres=postgres,
            redis=redis,
            twilio=twilio,
            serve=serve,
            worker=worker,
            webhook_url=f"http://127.0.0.1:{gateway.port}{WHATSAPP_PATH}",
            restarts=restarts,
        )
