"""What a chaos run is asked for (``relaydesk bench chaos``'s options), checked once."""

from __future__ import annotations

from dataclasses import dataclass

# The faults, in the order they are done by default; one at a time, recovery between them.
FAULTS = ("background-kill", "gateway-kill", "redis-stop", "worker-stop", "postgres-stop")
# The model's wait is bounded as in `bench reply`: the gateway gives one model call 60 s.
MAX_MODEL_LATENCY_S = 30.0


@dataclass(frozen=True, slots=True)
class ChaosOptions:
    rate: float = 40.0  # messages/s offered, all customers together
    customers: int = 300
    warmup_s: float = 60.0
    soak_s: float = 600.0  # fault-free, after the warm-up
    faults: tuple[str, ...] = FAULTS
    fault_gap_s: float = 60.0  # recovery time after each fault, before the next
    settle_s: float = 420.0  # at most, after the last fault's gap
    model_latency_s: float = 0.0  # 0: the offline model; else a local model that waits this long
    logs_dir: str | None = None  # where the processes' logs are kept; None: removed after

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError("the rate must be positive messages per second")
        if self.customers < 1:
            raise ValueError("customers must be at least 1")
        if min(self.warmup_s, self.soak_s, self.fault_gap_s, self.settle_s) < 0:
            raise ValueError("the warm-up, soak, fault gap and settle must not be negative")
        unknown = [fault for fault in self.faults if fault not in FAULTS]
        if unknown:
            raise ValueError(f"unknown faults {', '.join(unknown)} (known: {', '.join(FAULTS)})")
        if len(set(self.faults)) != len(self.faults):
            raise ValueError("each fault at most once per run")
        if not 0 <= self.model_latency_s <= MAX_MODEL_LATENCY_S:
            raise ValueError(f"the model latency must be between 0 and {MAX_MODEL_LATENCY_S:g} s")

    @property
    def model(self) -> str:
        if self.model_latency_s == 0:
            return "offline model"
        return f"local model answering after {self.model_latency_s:g} s"
