"""The chaos run phase by phase and fault by fault, from what it recorded.

Per phase: the messages due in it, the webhook attempts started in it and how many of them
failed (no 200), the time from the due time of each message due in it to its acknowledgement
(its retries included), and the reply latency of the messages acknowledged in it — from the
acknowledgement (the first 200) to their reply's first create at Twilio; a reply that reached
Twilio before a late acknowledgement (the first 200 was lost with the process that sent it,
the retry was answered later) counts as 0.

Per fault, counted from the moment it was done:
- webhooks recovered: until the first 200 to an attempt started after the last failed attempt
  of the fault's phase (0 when none failed; None when none succeeded after it);
- replies recovered: until the first reply to a message due after the fault began (None when
  none came), i.e. until a customer writing during or after the fault is answered again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from devtools.bench.chaos_records import Attempt, Create, Fault, Offered, Phase, Recorded
from devtools.bench.chaos_replies import ReplyKey, ReplyMap, first_replies
from devtools.bench.latencies import ReplyLatencies


@dataclass(frozen=True, slots=True)
class PhaseFigures(ReplyLatencies):
    name: str
    seconds: float
    due: int  # messages first due in the phase
    attempts: int  # webhook attempts started in the phase, retries included
    errors: int  # of them, not answered 200
    latencies_ms: tuple[float, ...]  # sorted: acknowledged in the phase → reply at Twilio
    ack_ms: tuple[float, ...]  # sorted: due in the phase → acknowledged, retries included

    @property
    def max_ms(self) -> float:
        return self.latencies_ms[-1] if self.latencies_ms else 0.0


@dataclass(frozen=True, slots=True)
class FaultFigures:
    name: str
    at_s: float  # since the run began
    down_s: float  # until the service was given back (a kill: until serve runs again)
    errors: int  # failed webhook attempts in the fault's phase
    # Of them, those a running gateway answered with a status other than 200; the rest got no
    # answer (cut with the process killed, refused while none listened, or timed out).
    refused: int
    webhooks_recovered_s: float | None
    replies_recovered_s: float | None
    restarts: int  # processes found dead and started again in the fault's phase


@dataclass(frozen=True, slots=True)
class Timeline:
    phases: tuple[PhaseFigures, ...]
    faults: tuple[FaultFigures, ...]


def timeline(recorded: Recorded) -> Timeline:
    ours = frozenset(message.sid for message in recorded.offered)
    mapping = ReplyMap(ours, recorded.snapshot)
    replies = first_replies(recorded.creates, mapping.keys(recorded.creates))
    attempts = [a for message in recorded.offered for a in message.attempts]
    phases = tuple(_phase(p, recorded.offered, attempts, replies) for p in recorded.phases)
    by_name = {phase.name: phase for phase in recorded.phases}
    begun = recorded.phases[0].start if recorded.phases else 0.0
    faults = tuple(
        _fault(fault, by_name[fault.name], begun, recorded, attempts, replies)
        for fault in recorded.faults
        if fault.name in by_name
    )
    return Timeline(phases, faults)


def _phase(
    phase: Phase,
    offered: Sequence[Offered],
    attempts: Sequence[Attempt],
    replies: Mapping[ReplyKey, Create],
) -> PhaseFigures:
    latencies = []
    for message in offered:
        acked = message.acked_at
        reply = replies.get(ReplyKey(message.sid, 0))
        if acked is not None and reply is not None and phase.holds(acked):
            latencies.append(max(0.0, reply.at - acked) * 1000.0)
    started = [a for a in attempts if phase.holds(a.started)]
    acks = [
        (message.acked_at - message.due) * 1000.0
        for message in offered
        if message.acked_at is not None and phase.holds(message.due)
    ]
    return PhaseFigures(
        name=phase.name,
        seconds=phase.end - phase.start,
        due=sum(phase.holds(message.due) for message in offered),
        attempts=len(started),
        errors=sum(not a.ok for a in started),
        latencies_ms=tuple(sorted(latencies)),
        ack_ms=tuple(sorted(acks)),
    )


def _fault(
    fault: Fault,
    phase: Phase,
    begun: float,
    recorded: Recorded,
    attempts: Sequence[Attempt],
    replies: Mapping[ReplyKey, Create],
) -> FaultFigures:
    failed = [a for a in attempts if phase.holds(a.started) and not a.ok]
    return FaultFigures(
        name=fault.name,
        at_s=fault.started - begun,
        down_s=fault.restored - fault.started,
        errors=len(failed),
        refused=sum(a.status is not None for a in failed),
        webhooks_recovered_s=_webhooks_recovered(fault, failed, attempts),
        replies_recovered_s=_replies_recovered(fault, recorded.offered, replies),
        restarts=sum(phase.holds(restart.at) for restart in recorded.restarts),
    )


def _webhooks_recovered(
    fault: Fault, failed: Sequence[Attempt], attempts: Sequence[Attempt]
) -> float | None:
    if not failed:
        return 0.0
    last_failure = max(a.started for a in failed)
    after = [a.finished for a in attempts if a.ok and a.started >= last_failure]
    return min(after) - fault.started if after else None


def _replies_recovered(
    fault: Fault, offered: Sequence[Offered], replies: Mapping[ReplyKey, Create]
) -> float | None:
    due_after = {message.sid for message in offered if message.due >= fault.started}
    answered = [create.at for key, create in replies.items() if key.sid in due_after]
    return min(answered) - fault.started if answered else None
