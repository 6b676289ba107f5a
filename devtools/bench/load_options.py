"""The options of ``relaydesk bench reply --model-latency`` (`devtools.bench.reply_load`), with
their defaults and bounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from devtools.bench import services
from devtools.bench.model_server import REPLY_TOKENS

__all__ = ["LoadOptions"]

DEFAULT_CUSTOMERS = 40
DEFAULT_RATE = 20.0
DEFAULT_SECONDS = 5.0
DEFAULT_BACKGROUND = 2
# The gateway gives one model call 60 s; the latency and the stream must fit in it.
MAX_MODEL_LATENCY_S = 30.0
MAX_TOOL_LATENCY_S = 30.0
MAX_MESSAGES = 20_000
STALL_S = 20.0  # a side gives up on its missing replies after this long without any reply


@dataclass(frozen=True, slots=True)
class LoadOptions:
    model_latency_s: float
    stream_rate: float | None = None  # tokens/s after the first token; None: all at once
    customers: int = DEFAULT_CUSTOMERS
    rate: float = DEFAULT_RATE  # messages/s offered, all customers together
    seconds: float = DEFAULT_SECONDS
    background: int = DEFAULT_BACKGROUND  # `serve --background M`
    webchat: int = 0  # web chat visitors for the first-token figure
    tool_latency_s: float | None = None  # a third side whose model calls a read action per turn
    # The customers' stored history, with its vectors, before the load (hybrid recall per reply).
    embedded_history: bool = False
    postgres_url: str = field(default_factory=services.postgres_url_from_env)
    redis_url: str = field(default_factory=services.redis_url_from_env)

    def __post_init__(self) -> None:
        if not 0 < self.model_latency_s <= MAX_MODEL_LATENCY_S:
            raise ValueError(
                f"the model latency must be above 0 and at most {MAX_MODEL_LATENCY_S:g} s"
            )
        if self.stream_rate is not None and self.stream_rate <= 0:
            raise ValueError("the stream rate must be positive tokens per second")
        if self.customers < 1:
            raise ValueError("customers must be at least 1")
        if self.rate <= 0 or self.seconds <= 0:
            raise ValueError("the rate and the seconds must be positive")
        if self.rate * self.seconds > MAX_MESSAGES:
            raise ValueError(f"at most {MAX_MESSAGES} messages per side (rate x seconds)")
        if self.background < 1:
            raise ValueError("the background processes must be at least 1")
        if self.webchat < 0:
            raise ValueError("web chat visitors must not be negative")
        if self.tool_latency_s is not None and not 0 < self.tool_latency_s <= MAX_TOOL_LATENCY_S:
            raise ValueError(
                f"the tool latency must be above 0 and at most {MAX_TOOL_LATENCY_S:g} s"
            )

    @property
    def serve_args(self) -> tuple[str, ...]:
        # `serve --background` is new; one background process is what a serve without it runs.
        return () if self.background == 1 else ("--background", str(self.background))

    @property
    def stall_s(self) -> float:
        streaming = REPLY_TOKENS / self.stream_rate if self.stream_rate else 0.0
        # With the action a turn waits for a second model call and the action besides.
        acting = 0.0 if self.tool_latency_s is None else self.model_latency_s + self.tool_latency_s
        return STALL_S + self.model_latency_s + streaming + acting

    def slow_model_name(self) -> str:
        stream = f", {self.stream_rate:g} tok/s" if self.stream_rate else ""
        return f"slow ({self.model_latency_s:g} s{stream})"

    def tool_model_name(self) -> str:
        return f"{self.slow_model_name()} + tool ({self.tool_latency_s:g} s)"
