"""What ``relaydesk bench chaos`` records while it runs, as plain frozen records: the webhooks it
offered and every attempt at each, the creates the local Twilio API received, the phases and
faults of the run, the processes' memory, and the database's rows at the end. The checks
(`devtools.bench.chaos_checks`) are computed from these alone, so they can be tested on small
hand-made records. Times are `time.perf_counter` seconds, the clock of the whole run."""

from __future__ import annotations

from dataclasses import dataclass

OK = 200


@dataclass(frozen=True, slots=True)
class Attempt:
    """One POST of a webhook: when it started and ended, and the HTTP status (None: no answer —
    refused, cut or timed out)."""

    started: float
    finished: float
    status: int | None

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(frozen=True, slots=True)
class Offered:
    """One inbound message of the load: its MessageSid, the customer's number (E.164), when it
    was due, and every attempt to deliver it, in order (the same MessageSid each time)."""

    sid: str
    phone: str
    due: float
    attempts: tuple[Attempt, ...]

    @property
    def acked_at(self) -> float | None:
        """When the first 200 arrived (the provider stops retrying then)."""
        return next((a.finished for a in self.attempts if a.ok), None)


@dataclass(frozen=True, slots=True)
class Create:
    """One message the local Twilio API accepted: when it arrived, its ``To``, ``Body`` and
    ``StatusCallback`` fields, and the Message SID it was given."""

    at: float
    to: str
    body: str
    callback: str
    sid: str


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A customer's message stored by the gateway (``messages``, role user): its row id (the
    order the gateway stored them in) and provider MessageSid."""

    id: int
    sid: str


@dataclass(frozen=True, slots=True)
class InboxRow:
    """An acknowledged message not yet stored (``inbox_messages``); ``set_aside``: given up on
    after repeated failures, kept for an operator."""

    sid: str
    set_aside: bool


@dataclass(frozen=True, slots=True)
class Turn:
    """A stored message's turn (``turns``)."""

    id: int
    inbound_message_id: int
    conversation_key: str
    status: str
    delivery_status: str | None


@dataclass(frozen=True, slots=True)
class Outbound:
    """A send the gateway recorded (``outbound_messages``): the provider's Message SID, the turn
    it answered and which part of the reply it was."""

    sid: str
    turn_id: int | None
    part: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The gateway's rows after the settle."""

    messages: tuple[StoredMessage, ...]
    inbox: tuple[InboxRow, ...]
    turns: tuple[Turn, ...]
    outbound: tuple[Outbound, ...]


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of the run: ``warmup``, ``soak``, one per fault (from its start until the next
    fault's, recovery included), ``settle``."""

    name: str
    start: float
    end: float

    def holds(self, moment: float) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: when it was done and when the service was given back (for a kill: when the
    orchestrator had what died running again)."""

    name: str
    started: float
    restored: float


@dataclass(frozen=True, slots=True)
class RssSample:
    """A process's resident memory at one moment; ``process`` is its role (``gateway-1``,
    ``background-2``, ``worker``), which a restarted process keeps."""

    at: float
    process: str
    rss_mb: float


@dataclass(frozen=True, slots=True)
class Restart:
    """A process the orchestrator found dead (``at``) and started again: how long until it was
    ready (None: it was not, and was stopped to be started again)."""

    at: float
    process: str
    exit_code: int | None
    ready_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Recorded:
    """Everything one run recorded."""

    offered: tuple[Offered, ...]
    creates: tuple[Create, ...]
    snapshot: Snapshot
    phases: tuple[Phase, ...]
    faults: tuple[Fault, ...]
    rss: tuple[RssSample, ...]
    restarts: tuple[Restart, ...]
    settle_s: float | None  # None: not settled within the bound
    # The HTTP status each status callback to the gateway got (None: no answer); like Twilio,
    # the local Twilio does not post a refused one again.
    callbacks: tuple[int | None, ...] = ()

    @property
    def callbacks_refused(self) -> int:
        """Status callbacks the gateway did not accept: no answer, or not a 2xx (it answers
        204)."""
        return sum(status is None or not 200 <= status < 300 for status in self.callbacks)

    def phase_at(self, moment: float) -> str | None:
        return next((p.name for p in self.phases if p.holds(moment)), None)
